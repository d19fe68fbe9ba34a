//! Reading and writing whole frames on a tokio byte stream.
//!
//! A reader owns one buffer per connection and reuses it; each frame's body and attachment
//! are read whole (after the header passed its checks, so a peer cannot make it allocate past
//! the limit).

use crate::frame::{FrameError, RequestHeader, ResponseHeader, REQUEST_HEADER_LEN, RESPONSE_HEADER_LEN};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Why reading a frame stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The stream failed or ended inside a frame.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The frame is refused.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// One request as read: its header; the body is `buf[..header.length]`, the attachment follows.
/// `Ok(None)` at a clean end of stream (between frames).
pub async fn read_request<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    limit: u64,
) -> Result<Option<RequestHeader>, ReadError> {
    let mut head = [0u8; REQUEST_HEADER_LEN];
    if !read_head(r, &mut head).await? {
        return Ok(None);
    }
    let header = RequestHeader::parse(&head, limit)?;
    read_rest(r, buf, header.length, header.attach_length).await?;
    Ok(Some(header))
}

/// One response as read (see [`read_request`]).
pub async fn read_response<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    limit: u64,
) -> Result<Option<ResponseHeader>, ReadError> {
    let mut head = [0u8; RESPONSE_HEADER_LEN];
    if !read_head(r, &mut head).await? {
        return Ok(None);
    }
    let header = ResponseHeader::parse(&head, limit)?;
    read_rest(r, buf, header.length, header.attach_length).await?;
    Ok(Some(header))
}

/// Fills `head`; `false` when the stream ended before its first byte.
async fn read_head<R: AsyncRead + Unpin>(r: &mut R, head: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < head.len() {
        let n = r.read(&mut head[got..]).await?;
        if n == 0 {
            if got == 0 {
                return Ok(false);
            }
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        got += n;
    }
    Ok(true)
}

async fn read_rest<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    length: u32,
    attach: u32,
) -> std::io::Result<()> {
    buf.clear();
    buf.resize(length as usize + attach as usize, 0);
    r.read_exact(buf).await?;
    Ok(())
}

/// Writes one whole frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, frame: &[u8]) -> std::io::Result<()> {
    w.write_all(frame).await
}
