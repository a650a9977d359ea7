class ImportProblem(Exception):
    pass
