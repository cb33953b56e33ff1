"""What the app and the report show: figures, reliability diagrams, the verdict, and user text shown literally."""
