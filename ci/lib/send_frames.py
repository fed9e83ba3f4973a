#!/usr/bin/env python3
"""Sends COUNT copies of an Ethernet/IPv6/UDP frame out of an interface through a
raw AF_PACKET socket: real frames through the kernel's transmit path, no neighbour
discovery, exactly as many as asked for. Used by ci/demo; needs CAP_NET_RAW.

    send_frames.py DEV SRC_IPV6 DST_IPV6 COUNT [--dst-mac aa:bb:cc:dd:ee:ff]
"""
import argparse
import ipaddress
import socket
import struct
import sys


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(src_mac: bytes, dst_mac: bytes, src: bytes, dst: bytes, payload: bytes) -> bytes:
    udp_len = 8 + len(payload)
    udp = struct.pack("!HHHH", 4000, 80, udp_len, 0) + payload
    pseudo = src + dst + struct.pack("!IxxxB", udp_len, socket.IPPROTO_UDP)
    csum = checksum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", csum) + udp[8:]
    ip6 = struct.pack("!IHBB", 6 << 28, udp_len, socket.IPPROTO_UDP, 64) + src + dst
    return dst_mac + src_mac + struct.pack("!H", 0x86DD) + ip6 + udp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dev")
    ap.add_argument("src", type=ipaddress.IPv6Address)
    ap.add_argument("dst", type=ipaddress.IPv6Address)
    ap.add_argument("count", type=int)
    ap.add_argument("--dst-mac", default="ff:ff:ff:ff:ff:ff")
    args = ap.parse_args()
    if args.count < 0:
        ap.error("count must not be negative")
    try:
        with open(f"/sys/class/net/{args.dev}/address") as f:
            src_mac = bytes.fromhex(f.read().strip().replace(":", ""))
    except OSError as e:
        print(f"send_frames: no interface {args.dev} here: {e}", file=sys.stderr)
        return 1
    dst_mac = bytes.fromhex(args.dst_mac.replace(":", ""))
    data = frame(src_mac, dst_mac, args.src.packed, args.dst.packed, b"ebpkg demo")
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((args.dev, 0))
        for _ in range(args.count):
            s.send(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
