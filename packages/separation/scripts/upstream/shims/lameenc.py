"""mp3 encoding only: never called on WAV output."""
