"""``speech-to-speech bench``: latency, barge-in, overhead, capacity and startup, measured like a client.

Every benchmark talks the Realtime protocol to a server (``--url``, or one it
starts in-process with the ``serve`` flags), streams audio in real time, and
writes a JSON file: ``summary`` (p50/p95 ms of every figure), ``environment``
and the raw per-turn ``samples``. ``bench startup`` starts ``serve`` itself
for every unit count, times it to ready and reads its memory. ``bench report``
turns those files into a plot and the README's table.
"""
