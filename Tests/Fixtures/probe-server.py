#!/usr/bin/env python3
"""An HTTP server for connectivity-probe tests, run inside a test's own network namespace.

Usage: probe-server.py ADDRESS PORT MODE_FILE

Each request reads MODE_FILE (so a test changes the server's behaviour by rewriting it):
  204            an empty 204 answer (Android's check)
  ok             200 with the body "OK\n" (NetworkManager's response=OK)
  redirect URL   302 to URL (a captive portal's login page)
  loop           302 to the path asked for (a redirect loop)
  content        200 with a login page
  huge           200 with an endless body, sent until the client goes
  silent         reads the request and never answers
Writes "ready" to stdout once it listens.
"""
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        with open(self.server.mode_file) as f:
            mode, _, argument = f.read().strip().partition(" ")
        if mode == "204":
            self.send_response(204)
            self.end_headers()
        elif mode == "ok":
            self.reply(200, b"OK\n")
        elif mode == "redirect":
            self.send_response(302)
            self.send_header("Location", argument)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "loop":
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "content":
            self.reply(200, b"<html><body>Log in to use this network</body></html>\n")
        elif mode == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                while True:
                    self.wfile.write(chunk)
            except OSError:
                return
        elif mode == "silent":
            time.sleep(3600)

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main():
    # A process started from a test's thread may inherit SIGTERM blocked; the test ends the
    # server with it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    address, port, mode_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    Server.address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
    server = Server((address, port), Handler)
    server.mode_file = mode_file
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
