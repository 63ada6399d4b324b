"""The e-graph side: the language, bulk loading, saturation under limits, frozen tables."""
