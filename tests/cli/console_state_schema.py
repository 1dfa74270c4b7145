"""The schema of the admin console's GET /api/state (actors/console/
console_view.hpp and the training loop's status), as the CLI tests check
it: every field the page, --role=status and /metrics read, with its type.
check(doc) returns the problems found, [] when the document fits."""

NUM, INT, STR, BOOL = "number", "integer", "string", "boolean"
DEVICE_STATES = {"alive", "suspected", "dead", "quarantined", "draining", "unknown to the planner"}
ROLES = {"forward", "grad_input", "grad_weight", "attn_scores", "attn_values", "attn_grad"}

# A field is (type, required); a nested object is a dict of fields; a list
# is [item schema].
PER_DEVICE = {"id": (INT, True), "profile": (STR, True), "tiles": (INT, True),
              "bytes_down": (INT, True), "bytes_up": (INT, True), "busy_seconds": (NUM, True),
              "cache_hits": (INT, True), "refused": (INT, True), "flops": (NUM, True)}
SHARD = {"shard": (INT, True), "step": (INT, True), "bytes_down": (INT, True), "bytes_up": (INT, True),
         "tiles": (INT, True), "memory_bytes": (INT, True), "issue_seconds": (NUM, True),
         "wait_seconds": (NUM, True), "egress_seconds": (NUM, True), "ingress_seconds": (NUM, True),
         "shard_peak_rss_bytes": (INT, False)}
TRAINING = {"step": (INT, True), "loss": (NUM, True), "seconds": (NUM, True), "model": (STR, True),
            "devices": (INT, True), "ps_shards": (INT, True), "tiles": (INT, True),
            "bytes_down": (INT, True), "bytes_up": (INT, True), "cache_hit_rate": (NUM, True),
            "tiles_verified": (INT, True), "tiles_rejected": (INT, True),
            "devices_quarantined": (INT, True), "failures_detected": (INT, True),
            "per_device": ([PER_DEVICE], True), "shards": ([SHARD], True),
            "step_split_seconds": ({"ps_compute": (NUM, True), "issue_tiles": (NUM, True),
                                    "wait_on_devices": (NUM, True), "allgather": (NUM, True)}, True)}
DEVICE = {"id": (INT, True), "state": (STR, True), "profile": (STR, False), "flops": (NUM, False),
          "memory_bytes": (INT, False), "downlink": (NUM, False), "uplink": (NUM, False),
          "latency": (NUM, False), "phi": (NUM, False),
          "peak_rss_bytes": (INT, False), "relay": (STR, False)}
RELAY = {"name": (STR, True), "state": (STR, True), "store_bytes": (INT, True), "devices": ([INT], True),
         "bytes_down": (INT, True), "bytes_up": (INT, True), "operands": (INT, True),
         "operands_named": (INT, True), "misses": (INT, True), "hit_rate": (NUM, True)}
FLEET = {"version": (INT, True), "quorum_reached": (BOOL, True), "alive": (INT, True),
         "suspected": (INT, True), "draining": (INT, True), "devices": ([DEVICE], True),
         "planner_error": (STR, False), "relays": ([RELAY], False)}
PLAN = {"m": (INT, True), "n": (INT, True), "k": (INT, True), "role": (STR, True), "local": (BOOL, True),
        "grid": ([INT], True), "tiles": (INT, True), "devices": ([INT], True),
        "predicted_seconds": (NUM, True), "bound": (STR, True)}
CONTROLS = {"enabled": (BOOL, True), "loop_attached": (BOOL, True), "checkpoints": (BOOL, True),
            "paused": (BOOL, True), "checkpoint_pending": (BOOL, True)}
EVENT = {"time": (NUM, True), "kind": (STR, True), "device": (INT, False), "phi": (NUM, False),
         "detail": (STR, False)}
DOCUMENT = {"training": (TRAINING, True), "fleet": (FLEET, True), "plans": ([PLAN], True),
            "controls": (CONTROLS, True), "events": ([EVENT], True), "events_dropped": (INT, True)}


def _fits(value, kind):
    if kind == NUM: return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == INT: return isinstance(value, int) and not isinstance(value, bool)
    if kind == STR: return isinstance(value, str)
    if kind == BOOL: return isinstance(value, bool)
    raise ValueError(kind)


def _check(value, schema, where, problems):
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            problems.append(f"{where}: not an object"); return
        for name, (sub, required) in schema.items():
            if name not in value:
                if required: problems.append(f"{where}.{name}: missing")
                continue
            _check(value[name], sub, f"{where}.{name}", problems)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            problems.append(f"{where}: not a list"); return
        for i, item in enumerate(value): _check(item, schema[0], f"{where}[{i}]", problems)
    elif not _fits(value, schema):
        problems.append(f"{where}: {value!r} is not a {schema}")


def check(doc, training_started=True):
    """Problems with `doc`; `training` may be null before the first step."""
    problems = []
    schema = dict(DOCUMENT)
    if not training_started and doc.get("training") is None: schema.pop("training")
    _check(doc, schema, "$", problems)
    for d in (doc.get("fleet") or {}).get("devices", []):
        if isinstance(d, dict) and d.get("state") not in DEVICE_STATES:
            problems.append(f"device {d.get('id')}: unknown state {d.get('state')!r}")
    for p in doc.get("plans") or []:
        if isinstance(p, dict) and p.get("role") not in ROLES: problems.append(f"plan role {p.get('role')!r}")
        if isinstance(p, dict) and len(p.get("grid", [])) != 3: problems.append(f"plan grid {p.get('grid')!r}")
    return problems
