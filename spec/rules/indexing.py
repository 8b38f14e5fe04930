"""gather and scatter."""
