"""Assets: uploaded files, their metadata, and resized images."""
