"""The server: ``serve``'s process, the FastAPI app and its routes, and who may connect.

Owns loading the models and the pool (``server``), the one uvicorn setup
(``serving``), the WebSocket endpoint and the HTTP endpoints beside it
(``router``), the demo page, the readiness probe, the API key and Origin
checks. May import every other room of ``realtime``; none imports it.
"""
