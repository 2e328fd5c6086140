//! Where an address or a host leads (tern_protocol::hosts), checked here
//! against the URLs as the policy reads them.

pub use tern_protocol::hosts::*;

#[cfg(test)]
mod tests {
    use tern_protocol::hosts::is_internal_host;

    #[test]
    fn internal_hosts_however_the_url_wrote_them() {
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0/",
            "http://0.0.0.0:8080/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::1]/",
            "http://localhost/",
            "http://api.localhost/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://169.254.169.254/",
            "http://0x7f.1/",
        ] {
            let host = crate::engine::url_host(url).unwrap();
            assert!(is_internal_host(&host), "{url} read as {host}");
        }
        for url in ["https://docs.rs/", "http://8.8.8.8/", "http://[2606:4700::1111]/", "http://localhost.example/"] {
            let host = crate::engine::url_host(url).unwrap();
            assert!(!is_internal_host(&host), "{url} read as {host}");
        }
    }
}
