"""conv_general_dilated."""
