#!/usr/bin/env python3
"""An OTLP/HTTP collector that takes every export and keeps nothing: the far end of
`OTEL_EXPORTER_OTLP_ENDPOINT` when the cost of tracing is measured (BENCHMARKS.md,
"Tracing"). Prints how many exports and bytes it took when stopped.

    python3 bench/otlp-sink.py 4318
"""
import http.server
import signal
import sys

taken = {"exports": 0, "bytes": 0}


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        self.rfile.read(n)
        taken["exports"] += 1
        taken["bytes"] += n
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 4318
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Sink)

    def stop(*_):
        print(f"otlp-sink: {taken['exports']} exports, {taken['bytes']} bytes", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
