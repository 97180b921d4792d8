"""Example tool modules for the packaged client (`--tool-module examples.<name>`)."""
