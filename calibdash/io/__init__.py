"""Reading predictions and labels: file formats, column choice and validation, with messages that say how to fix a file."""
