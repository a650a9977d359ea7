import logging

_log = logging.getLogger("absl")
debug, info, warning, error, exception = _log.debug, _log.info, _log.warning, _log.error, _log.exception
warn = warning
log = _log.log
