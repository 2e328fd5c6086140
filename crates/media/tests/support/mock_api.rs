//! A stand-in for the media API in tests (shared by tern-media's broker
//! tests and tern-cli's end-to-end ones): an HTTP/1 server on 127.0.0.1
//! that sends each request's head, lower-cased, on a channel and answers
//! `200` with the given body, closing the connection.

/// The server's base URL (`http://127.0.0.1:PORT/api`) and the heads received.
pub async fn mock_api(body: &'static str) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = tx.send(String::from_utf8_lossy(&head).to_lowercase());
            let answer =
                format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (url, rx)
}
