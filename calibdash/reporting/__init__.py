"""The offline HTML report and the literature behind every number."""
