"""Tools the server runs itself: a session's MCP servers (listed once, called inside responses), the pure
life of a response's calls, the preamble said while a reply waits and the holding phrases when the wait goes
on (docs/sessions.md, "MCP tools", "No dead air")."""
