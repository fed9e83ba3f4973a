//! Packets for scenarios and benchmarks: a small builder and a deterministic
//! generator of varied traffic.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Ethernet addresses used by the scenarios' frames.
pub const DST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
pub const SRC_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Ethernet header, then `vlans` 802.1Q tags, for `ethertype`.
pub fn eth(ethertype: u16, vlans: &[u16]) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    p.extend(DST_MAC);
    p.extend(SRC_MAC);
    for v in vlans {
        p.extend(0x8100u16.to_be_bytes());
        p.extend(v.to_be_bytes());
    }
    p.extend(ethertype.to_be_bytes());
    p
}

/// UDP header with `payload` (checksum 0: valid for IPv4, tolerated by XDP).
pub fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend(sport.to_be_bytes());
    u.extend(dport.to_be_bytes());
    u.extend(((8 + payload.len()) as u16).to_be_bytes());
    u.extend([0, 0]);
    u.extend(payload);
    u
}

/// An IPv6 packet in Ethernet (with VLAN tags when given).
pub fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8, tclass: u8, vlans: &[u16], l4: &[u8]) -> Vec<u8> {
    let mut p = eth(0x86dd, vlans);
    let first = (6u32 << 28) | (u32::from(tclass) << 20);
    p.extend(first.to_be_bytes());
    p.extend((l4.len() as u16).to_be_bytes());
    p.push(17);
    p.push(hop_limit);
    p.extend(src.octets());
    p.extend(dst.octets());
    p.extend(l4);
    p
}

/// An IPv4 packet in Ethernet (with VLAN tags when given), header checksum set.
pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, tos: u8, vlans: &[u16], l4: &[u8]) -> Vec<u8> {
    let mut p = eth(0x0800, vlans);
    let mut h = vec![0x45, tos];
    h.extend(((20 + l4.len()) as u16).to_be_bytes());
    h.extend([0, 0, 0x40, 0, ttl, 17, 0, 0]);
    h.extend(src.octets());
    h.extend(dst.octets());
    let c = csum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend(h);
    p.extend(l4);
    p
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
