//! Target safety: refuse loopback, private, link-local and other non-public addresses,
//! checked on the address actually connected to (after DNS), not on the host name.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// A target refused for the address it resolved to. Its message names the rule, never
/// the address: a tenant must not be able to look up the operator's internal names
/// (`db.corp.internal` → 10.4.2.7) by reading why an attempt was refused.
#[derive(Debug, thiserror::Error)]
#[error("refused target: the host resolves to {}, not a public address", rule(*.0))]
pub struct RefusedTarget(pub IpAddr);

/// Which kind of non-public address `ip` is, in words.
pub fn rule(ip: IpAddr) -> &'static str {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    match (ip, v4) {
        (_, Some(v4)) if v4.is_loopback() => "a loopback address",
        (_, Some(v4)) if v4.is_private() => "a private network address",
        (_, Some(v4)) if v4.is_link_local() => "a link-local address",
        (_, Some(v4)) if v4.octets()[0] == 100 && (64..128).contains(&v4.octets()[1]) => {
            "a carrier-grade NAT address"
        }
        (_, Some(_)) => "a reserved or special-purpose address",
        (IpAddr::V6(v6), None) if v6.is_loopback() => "a loopback address",
        (IpAddr::V6(v6), None) if (v6.segments()[0] & 0xfe00) == 0xfc00 => "a unique local address",
        (IpAddr::V6(v6), None) if (v6.segments()[0] & 0xffc0) == 0xfe80 => "a link-local address",
        _ => "a reserved or special-purpose address",
    }
}

pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v6(v6: Ipv6Addr) -> bool {
    let seg = v6.segments();
    // Forms that carry an IPv4 address inside: judged by that address.
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if seg[..6] == [0; 6] {
        // IPv4-compatible (::a.b.c.d), deprecated but still routed by some stacks.
        return is_public_v4(embedded_v4(seg[6], seg[7])) && !v6.is_loopback();
    }
    if seg[0] == 0x2002 {
        // 6to4: the IPv4 address is in bits 16..48.
        return is_public_v4(embedded_v4(seg[1], seg[2]));
    }
    if seg[0] == 0x2001 && seg[1] == 0 {
        // Teredo: the server in bits 32..64, the client (inverted) in the last 32 bits.
        return is_public_v4(embedded_v4(seg[2], seg[3]))
            && is_public_v4(embedded_v4(!seg[6], !seg[7]));
    }
    // NAT64: 64:ff9b::/96 and 64:ff9b:1::/48, refused whole.
    let nat64 = seg[0] == 0x64 && seg[1] == 0xff9b && (seg[2] == 1 || seg[2..6] == [0; 4]);
    !(nat64
        || v6.is_loopback()
        || v6.is_unspecified()
        || v6.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local
        || (seg[0] & 0xffc0) == 0xfe80 // link-local
        || (seg[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x0100 && seg[1..4] == [0; 3])) // discard-only
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240)
}

/// A resolver that drops the connection attempt when any resolved address is non-public.
#[derive(Clone, Default)]
pub struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
                return Err(
                    Box::new(RefusedTarget(bad.ip())) as Box<dyn std::error::Error + Send + Sync>
                );
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

pub fn resolver() -> Arc<PublicOnlyResolver> {
    Arc::new(PublicOnlyResolver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_rule_not_the_address() {
        for (ip, says) in [
            ("10.4.2.7", "private network"),
            ("127.0.0.1", "loopback"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("fd00::1", "unique local"),
            ("::ffff:192.168.1.1", "private network"),
            ("240.0.0.1", "reserved"),
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            let text = RefusedTarget(ip).to_string();
            assert!(text.contains(says), "{text}");
            assert!(!text.contains(&ip.to_string()), "{text}");
        }
    }

    #[test]
    fn private_and_special_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "255.255.255.255",
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "2002:c0a8:101::",
            "2001:0:4136:e378:8000:63bf:f5ff:fffe", // Teredo, client 10.0.0.1
            "2001:0:a00:1::1",                      // Teredo, server 10.0.0.1
            "::127.0.0.1",
            "::10.0.0.1",
            "fec0::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "2606:4700:4700::1111",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7", // Teredo, client 8.8.8.8
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
