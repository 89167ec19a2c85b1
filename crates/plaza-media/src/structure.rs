//! Walks each format's structure from its first byte to its end marker, so
//! a file with anything after the image (the polyglot trick: an image
//! followed by a ZIP, a script or HTML) is refused, and counts a GIF's or a
//! WebP's frames (animations are refused).

use crate::{ImageKind, MediaError};

/// `Ok` when the image ends exactly where the file does and is one frame.
pub fn check(kind: ImageKind, bytes: &[u8]) -> Result<(), MediaError> {
    let end = match kind {
        ImageKind::Png => png_end(bytes)?,
        ImageKind::Jpeg => jpeg_end(bytes)?,
        ImageKind::Gif => gif_end(bytes)?,
        ImageKind::Webp => webp_end(bytes)?,
    };
    if end < bytes.len() {
        return Err(MediaError::Polyglot(format!(
            "{} bytes after the end of the {}",
            bytes.len() - end,
            kind.extension().to_uppercase()
        )));
    }
    Ok(())
}

fn truncated(what: &str) -> MediaError {
    MediaError::Corrupt(format!("{what} runs past the end of the file"))
}

fn u16_be(bytes: &[u8], at: usize) -> Option<usize> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]) as usize)
}

fn u32_be(bytes: &[u8], at: usize) -> Option<usize> {
    let word = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([word[0], word[1], word[2], word[3]]) as usize)
}

fn u32_le(bytes: &[u8], at: usize) -> Option<usize> {
    let word = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([word[0], word[1], word[2], word[3]]) as usize)
}

/// After the signature, chunks of length, type, data and CRC, up to `IEND`.
fn png_end(bytes: &[u8]) -> Result<usize, MediaError> {
    let mut at = 8;
    loop {
        let length = u32_be(bytes, at).ok_or_else(|| truncated("a PNG chunk"))?;
        let kind = bytes
            .get(at + 4..at + 8)
            .ok_or_else(|| truncated("a PNG chunk"))?;
        if kind == b"acTL" {
            return Err(MediaError::Animated);
        }
        let next = at
            .checked_add(12 + length)
            .filter(|next| *next <= bytes.len())
            .ok_or_else(|| truncated("a PNG chunk"))?;
        if kind == b"IEND" {
            return Ok(next);
        }
        at = next;
    }
}

/// Segments after `SOI`; after each start of scan, the entropy-coded data
/// up to the next marker; the image ends with `EOI`.
fn jpeg_end(bytes: &[u8]) -> Result<usize, MediaError> {
    let mut at = 2;
    loop {
        if bytes.get(at) != Some(&0xFF) {
            return Err(if at >= bytes.len() {
                truncated("the JPEG")
            } else {
                MediaError::Corrupt("a JPEG segment does not start with a marker".to_owned())
            });
        }
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let marker = *bytes.get(at).ok_or_else(|| truncated("the JPEG"))?;
        at += 1;
        match marker {
            0xD9 => return Ok(at),
            0x01 | 0xD0..=0xD7 => continue,
            _ => {}
        }
        let length = u16_be(bytes, at).ok_or_else(|| truncated("a JPEG segment"))?;
        at += length;
        if at > bytes.len() {
            return Err(truncated("a JPEG segment"));
        }
        if marker == 0xDA {
            // Entropy-coded data: 0xFF is followed by 0x00 (a stuffed byte)
            // or a restart marker inside it; anything else is a marker.
            loop {
                match (bytes.get(at), bytes.get(at + 1)) {
                    (Some(0xFF), Some(0x00 | 0xD0..=0xD7)) => at += 2,
                    (Some(0xFF), Some(_)) => break,
                    (Some(_), _) => at += 1,
                    (None, _) => return Err(truncated("the JPEG's image data")),
                }
            }
        }
    }
}

/// Header, screen descriptor and global colour table, then blocks up to
/// the trailer; more than one image descriptor is an animation.
fn gif_end(bytes: &[u8]) -> Result<usize, MediaError> {
    let flags = *bytes.get(10).ok_or_else(|| truncated("the GIF header"))?;
    let mut at = 13 + colour_table(flags);
    let mut frames = 0;
    loop {
        match bytes.get(at) {
            Some(0x3B) => return Ok(at + 1),
            Some(0x21) => at = sub_blocks(bytes, at + 2)?,
            Some(0x2C) => {
                frames += 1;
                if frames > 1 {
                    return Err(MediaError::Animated);
                }
                let flags = *bytes.get(at + 9).ok_or_else(|| truncated("a GIF image"))?;
                // Descriptor, local colour table, LZW code size, then data.
                at = sub_blocks(bytes, at + 10 + colour_table(flags) + 1)?;
            }
            Some(other) => {
                return Err(MediaError::Corrupt(format!(
                    "unknown GIF block 0x{other:02x}"
                )));
            }
            None => return Err(truncated("the GIF")),
        }
    }
}

fn colour_table(flags: u8) -> usize {
    if flags & 0x80 == 0 {
        0
    } else {
        3 << ((flags & 0x07) + 1)
    }
}

/// Skips data sub-blocks (a length byte, then that many bytes) up to and
/// including the empty one.
fn sub_blocks(bytes: &[u8], mut at: usize) -> Result<usize, MediaError> {
    loop {
        let size = *bytes.get(at).ok_or_else(|| truncated("GIF data"))? as usize;
        at += 1 + size;
        if size == 0 {
            return Ok(at);
        }
        if at > bytes.len() {
            return Err(truncated("GIF data"));
        }
    }
}

/// `RIFF`, its length, `WEBP`: the RIFF length says where the file ends.
/// An `ANIM` chunk is an animation.
fn webp_end(bytes: &[u8]) -> Result<usize, MediaError> {
    let length = u32_le(bytes, 4).ok_or_else(|| truncated("the WebP header"))?;
    let end = 8 + length + (length & 1);
    if end > bytes.len() {
        return Err(truncated("the WebP"));
    }
    let mut at = 12;
    while at + 8 <= end {
        if &bytes[at..at + 4] == b"ANIM" {
            return Err(MediaError::Animated);
        }
        let size = u32_le(bytes, at + 4).ok_or_else(|| truncated("a WebP chunk"))?;
        at += 8 + size + (size & 1);
    }
    Ok(end)
}
