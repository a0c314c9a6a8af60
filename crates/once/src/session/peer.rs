//! Naming the process at the other end of a loopback connection, for the "busy" message.
//!
//! TCP carries no credentials, so the listener asks the kernel's tables instead: the socket whose
//! local address is the peer's appears in `/proc/net/tcp` with an inode, and the process that
//! holds that inode has a `socket:[inode]` link under `/proc/<pid>/fd`. It is best effort: another
//! user's processes cannot be inspected, and the answer is only ever shown, never trusted. This
//! module must never be used to decide who may connect; the token does that.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// The process holding the client end of the connection `client → server`, with its command
/// name, when this user may see it.
pub fn owner(client: SocketAddr, server: SocketAddr) -> Option<(u32, String)> {
    let (SocketAddr::V4(client), SocketAddr::V4(server)) = (client, server) else {
        return None;
    };
    let inode = socket_inode(&fs::read_to_string("/proc/net/tcp").ok()?, client, server)?;
    let link = format!("socket:[{inode}]");
    for process in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = process.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(fds) = fs::read_dir(process.path().join("fd")) else {
            continue;
        };
        let holds = fds
            .flatten()
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == &*link));
        if holds {
            let name = fs::read_to_string(process.path().join("comm")).unwrap_or_default();
            return Some((pid, name.trim().to_string()));
        }
    }
    None
}

/// The inode of the socket bound to `local` and connected to `remote`, from `/proc/net/tcp`.
fn socket_inode(table: &str, local: SocketAddrV4, remote: SocketAddrV4) -> Option<u64> {
    table.lines().skip(1).find_map(|row| {
        let fields: Vec<&str> = row.split_whitespace().collect();
        let matches =
            parse_address(fields.get(1)?)? == local && parse_address(fields.get(2)?)? == remote;
        if matches {
            fields.get(9)?.parse().ok()
        } else {
            None
        }
    })
}

/// `0100007F:1F90` → 127.0.0.1:8080. The kernel prints the address's four bytes as one native
/// `u32` in hex and the port in host order.
fn parse_address(text: &str) -> Option<SocketAddrV4> {
    let (ip, port) = text.split_once(':')?;
    let ip = u32::from_str_radix(ip, 16).ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    Some(SocketAddrV4::new(Ipv4Addr::from(ip.to_ne_bytes()), port))
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn finds_the_process_holding_a_loopback_client() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connects");
        let (_server_side, peer) = listener.accept().expect("accepts");
        let server = listener.local_addr().expect("addr");
        let (pid, _) = owner(peer, server).expect("finds the owner");
        assert_eq!(pid, std::process::id());
        assert_eq!(
            owner(server, peer).map(|(pid, _)| pid),
            Some(std::process::id())
        );
        drop(client);
    }

    #[test]
    fn parses_the_kernel_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
            0: 0100007F:A1B2 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 98765 1 0 20 4 30 10 -1\n";
        let local = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0xA1B2);
        let remote = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080);
        assert_eq!(socket_inode(table, local, remote), Some(98765));
        assert_eq!(socket_inode(table, remote, local), None);
    }
}
