"""Import paths the specification documents, kept as thin aliases of the real modules."""
