//! A network of the cluster's own, for partitions. Each node of a cluster started with
//! `--netns` runs in a network namespace the cluster makes (`kith-C-D` for a node that would
//! have had `127.0.C.D`), joined by a veth pair to a bridge (`kithbrC`) holding
//! `10.251.C.254/24` on the machine's side, and listens on `10.251.C.D`. A link is cut by
//! blackhole routes inside the namespaces at both of its ends (packets vanish, as on a cut
//! cable: connections hang rather than fail), so the machine's clients keep reaching every
//! node unless a node is cut from the bridge's address too.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};

/// The address a node listens on in its namespace, for the loopback address it would have had
/// (`.254` is the machine's and `.255` the broadcast: refused).
pub(crate) fn node_address(loopback: Ipv4Addr) -> Result<Ipv4Addr> {
    let o = loopback.octets();
    if o[3] >= 254 || o[3] == 0 {
        return Err(Error::Cluster(format!(
            "{loopback}: a node on the cluster's own network needs a last octet of 1 to 253"
        )));
    }
    Ok(Ipv4Addr::new(10, 251, o[2], o[3]))
}

/// The namespace of the node at `address`.
pub(crate) fn namespace(address: Ipv4Addr) -> String {
    let o = address.octets();
    format!("kith-{}-{}", o[2], o[3])
}

/// The machine's address on the bridge of the nodes at `address`'s /24: the clients' side.
fn gateway(address: Ipv4Addr) -> Ipv4Addr {
    let o = address.octets();
    Ipv4Addr::new(o[0], o[1], o[2], 254)
}

fn bridge(address: Ipv4Addr) -> String {
    format!("kithbr{}", address.octets()[2])
}

fn host_veth(address: Ipv4Addr) -> String {
    let o = address.octets();
    format!("kv{}-{}", o[2], o[3])
}

/// Makes the bridge for `address`'s /24 and `address`'s namespace on it, unless they exist.
pub(crate) fn ensure(address: Ipv4Addr) -> Result<()> {
    let br = bridge(address);
    if !Path::new("/sys/class/net").join(&br).exists() {
        ip(&["link", "add", "name", &br, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{}/24", gateway(address)), "dev", &br])?;
        ip(&["link", "set", &br, "up"])?;
    }
    let ns = namespace(address);
    if Path::new("/run/netns").join(&ns).exists() {
        return Ok(());
    }
    let veth = host_veth(address);
    ip(&["netns", "add", &ns])?;
    ip(&["-n", &ns, "link", "set", "lo", "up"])?;
    ip(&["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
    ip(&["link", "set", &veth, "master", &br, "up"])?;
    ip(&["-n", &ns, "addr", "add", &format!("{address}/24"), "dev", "eth0"])?;
    ip(&["-n", &ns, "link", "set", "eth0", "up"])
}

/// Removes the namespaces of `addresses` (their veth pairs go with them) and their bridge.
pub(crate) fn remove(addresses: &[Ipv4Addr]) {
    for &a in addresses {
        let _ = ip(&["netns", "delete", &namespace(a)]);
    }
    if let Some(&a) = addresses.first() {
        let _ = ip(&["link", "delete", &bridge(a)]);
    }
}

/// Cuts the links between `a` and each of `others`, both ways, and with `clients` the link
/// between `a` and the machine too.
pub(crate) fn cut(a: Ipv4Addr, others: &[Ipv4Addr], clients: bool) -> Result<()> {
    for &o in others {
        blackhole(a, o)?;
        blackhole(o, a)?;
    }
    if clients { blackhole(a, gateway(a)) } else { Ok(()) }
}

/// Restores every link of the nodes at `addresses` that [`cut`] cut.
pub(crate) fn mend(addresses: &[Ipv4Addr]) -> Result<()> {
    for &a in addresses {
        ip(&["-n", &namespace(a), "route", "flush", "type", "blackhole"])?;
    }
    Ok(())
}

/// Packets from the node at `from` to `to` vanish.
fn blackhole(from: Ipv4Addr, to: Ipv4Addr) -> Result<()> {
    ip(&["-n", &namespace(from), "route", "replace", "blackhole", &format!("{to}/32")])
}

/// `command` run inside `address`'s namespace (`nsenter`, which enters only the network
/// namespace and then executes `command` itself: its process id is the command's).
pub(crate) fn command_in(address: Ipv4Addr, program: &str) -> Command {
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net=/run/netns/{}", namespace(address))).arg("--").arg(program);
    cmd
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip").args(args).output().map_err(Error::io(
        "running ip (iproute2; a cluster on its own network needs it, and root)",
    ))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Cluster(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_kernels_limits_and_follow_the_loopback_address() {
        let a = node_address(Ipv4Addr::new(127, 0, 255, 253)).unwrap();
        assert!(node_address(Ipv4Addr::new(127, 0, 2, 254)).is_err());
        assert_eq!(a, Ipv4Addr::new(10, 251, 255, 253));
        assert_eq!(namespace(a), "kith-255-253");
        // Interface names hold at most 15 bytes.
        assert!(host_veth(a).len() <= 15 && bridge(a).len() <= 15);
        assert_eq!(gateway(a), Ipv4Addr::new(10, 251, 255, 254));
    }
}
