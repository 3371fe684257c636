"""Flask-Limiter for `run.sh`: LIMIT requests per WINDOW seconds for all clients together, counted
with STRATEGY (`moving-window`, an exact sliding log, by default; `sliding-window-counter`, the
current and previous windows weighted; or `fixed-window`), served by waitress on PORT.

With `headers_enabled` (FIELDS unset) every response carries `X-RateLimit-Limit`,
`X-RateLimit-Remaining`, `X-RateLimit-Reset` (a Unix time) and `Retry-After`: the seconds to the
reset, on a 200 as on a 429, as Flask-Limiter sends them. FIELDS=none sends none of them (a bare
429).
"""

import os

from flask import Flask
from flask_limiter import Limiter
from waitress import serve

app = Flask(__name__)
limit = os.environ.get("LIMIT", "100")
window = os.environ.get("WINDOW", "10")
Limiter(
    key_func=lambda: "all",
    app=app,
    default_limits=[f"{limit} per {window} second"],
    strategy=os.environ.get("STRATEGY", "moving-window"),
    headers_enabled=os.environ.get("FIELDS") != "none",
    storage_uri="memory://",
)


@app.get("/")
def ok():
    return "ok"


serve(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8084")), threads=16, _quiet=True)
