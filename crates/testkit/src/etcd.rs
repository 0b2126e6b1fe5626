//! What etcd itself holds under a key, read through its JSON gateway (`POST /v3/kv/range` on
//! the client port, plain HTTP on 127.0.0.1): the only way to see which version the API server
//! stored an object in, since every read through the API server converts it.

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Error, Result};

/// The value stored under `key`, if any.
pub(crate) async fn get(port: u16, key: &str) -> Result<Option<Vec<u8>>> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let body = json!({ "key": b64.encode(key) }).to_string();
    let request = format!(
        "POST /v3/kv/range HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let context = format!("reading {key} from etcd on port {port}");
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(Error::io(context.clone()))?;
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(Error::io(context.clone()))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .await
        .map_err(Error::io(context.clone()))?;
    let text = String::from_utf8_lossy(&response);
    let (head, payload) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let failed = |message: String| Error::Api {
        context: context.clone(),
        message,
    };
    if head.split_whitespace().nth(1) != Some("200") {
        return Err(failed(head.lines().next().unwrap_or_default().to_owned()));
    }
    // An HTTP/1.0 request: the body comes unchunked and ends when the connection closes.
    let reply: Value = serde_json::from_str(payload).map_err(|e| failed(e.to_string()))?;
    let Some(value) = reply["kvs"][0]["value"].as_str() else {
        return Ok(None);
    };
    b64.decode(value)
        .map(Some)
        .map_err(|e| failed(e.to_string()))
}
