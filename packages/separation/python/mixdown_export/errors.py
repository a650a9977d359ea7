class ImportProblem(Exception):
    """A file that cannot be imported as it is; the message says what is wrong and what to do."""
