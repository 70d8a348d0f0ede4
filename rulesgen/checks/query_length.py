"""query-length: a rule's expression longer than VictoriaMetrics accepts. vmalert sends each rule's expression as
it is, and victoria-metrics refuses a query over -search.maxQueryLen (16,384 bytes by default) with a 422, "too
long query", at every evaluation: the rule never writes on VictoriaMetrics while Prometheus runs it."""
from .base import RULE, Check, Rule

VM_MAX_QUERY_LEN = 16384  # bytes: victoria-metrics' default -search.maxQueryLen


def run(rule: Rule):
    size = len(rule.expr.encode())
    if size > VM_MAX_QUERY_LEN:
        yield rule.hit(f"expression of {size} bytes, above VictoriaMetrics' default -search.maxQueryLen of "
                       f"{VM_MAX_QUERY_LEN}: vmalert's every evaluation of it fails (\"too long query\"); record a "
                       "part of it and read the record")


CHECK = Check("query-length", "error", False, "an expression longer than VictoriaMetrics' default "
              "-search.maxQueryLen (16,384 bytes)", RULE, run)
