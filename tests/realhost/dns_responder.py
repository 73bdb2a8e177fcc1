"""The site's resolver for the real-host tests: answers every UDP query with the code in /run/site/dns-rcode.

Run inside the sandbox's site network namespace: `dns_responder.py ADDRESS`. An internal-only site resolver often
answers REFUSED or SERVFAIL for names it does not serve (the root included); the file lets a test choose NOERROR,
REFUSED or SERVFAIL while the responder keeps running. It echoes the question and sets QR and RA; nothing else.
"""

from __future__ import annotations

import socket
import struct
import sys
from pathlib import Path

RCODES = {"NOERROR": 0, "SERVFAIL": 2, "NXDOMAIN": 3, "REFUSED": 5}
RCODE_FILE = Path("/run/site/dns-rcode")


def answer(query: bytes, rcode: int) -> bytes:
    """A reply to `query` with no records: same id and question, QR and RA set, the given RCODE."""
    query_id, flags, qdcount = struct.unpack("!HHH", query[:6])
    reply_flags = 0x8000 | (flags & 0x7900) | 0x0080 | rcode
    return struct.pack("!HHHHHH", query_id, reply_flags, qdcount, 0, 0, 0) + query[12:]


def serve(address: str) -> None:
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((address, 53))
        while True:
            query, peer = sock.recvfrom(4096)
            if len(query) < 12:
                continue
            rcode = RCODES.get(RCODE_FILE.read_text().strip(), 2) if RCODE_FILE.exists() else 0
            sock.sendto(answer(query, rcode), peer)


if __name__ == "__main__":
    serve(sys.argv[1])
