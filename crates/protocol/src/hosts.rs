//! Which hosts are this machine or its network. One classification, used by
//! the policy (a blanket `web_fetch` allow rule does not reach them) and by
//! `web_fetch` itself (a name that resolves there, a redirect into them).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where an address leads, when it is not the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Internal {
    /// Link-local or a cloud metadata service: never fetched.
    Metadata,
    /// Loopback, private, unspecified, shared (carrier NAT) or reserved:
    /// this machine or its network.
    Local,
}

/// How `ip` is internal, if it is; an IPv4 address carried in an IPv6 one
/// (mapped, compatible, NAT64, 6to4) counts as itself.
pub fn internal_address(ip: IpAddr) -> Option<Internal> {
    let ip = embedded_v4(ip);
    let metadata = match ip {
        IpAddr::V4(v4) => {
            v4.is_link_local() || v4 == Ipv4Addr::new(100, 100, 100, 200) // Alibaba
                || v4 == Ipv4Addr::new(192, 0, 0, 192) // Oracle
        }
        IpAddr::V6(v6) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80 || v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    };
    if metadata {
        return Some(Internal::Metadata);
    }
    let local = match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_unspecified()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
                || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        }
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unspecified() || (v6.segments()[0] & 0xfe00) == 0xfc00,
    };
    local.then_some(Internal::Local)
}

/// Whether `host` (as the policy's `url_host` reads it from a URL: an
/// address in its usual form, or a lowercase name) is this machine or its
/// network: `localhost` and its subdomains, or an internal address however
/// the URL wrote it (`2130706433`, `0`, `[::ffff:127.0.0.1]` arrive as
/// addresses).
pub fn is_internal_host(host: &str) -> bool {
    let host = host.trim_matches(['[', ']']);
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| internal_address(ip).is_some())
}

/// The IPv4 address an IPv6 one carries (mapped, compatible, NAT64, 6to4),
/// or the address itself.
fn embedded_v4(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let v4 = |hi: u16, lo: u16| IpAddr::V4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    match v6.segments() {
        // IPv4-compatible (not :: or ::1).
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => v4(hi, lo),
        // NAT64 well-known prefix.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => v4(hi, lo),
        // 6to4.
        [0x2002, hi, lo, ..] => v4(hi, lo),
        _ => ip,
    }
}
