"""Tools the server runs itself: a session's MCP servers (listed once, called inside responses), the pure
life of a response's calls, and the preamble said while a reply waits (docs/sessions.md, "MCP tools")."""
