//! A pack of whole (undeltified) objects, handed to libgit2's indexer. An
//! import writes each new object once: libgit2's own pack builder would
//! search for deltas between them first, which took most of an import's time
//! and held every object in memory twice.

use git2::{ObjectType, Odb};

/// Objects queued for one pack, compressed as they come.
#[derive(Default)]
pub struct PackOut {
    body: Vec<u8>,
    count: u32,
    encoder: Encoder,
}

/// Compresses objects into pack entries; one per thread.
pub struct Encoder {
    compressor: libdeflater::Compressor,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            // Speed over size (the user's next `git gc` repacks anyway), but
            // level 1, not libdeflate's 0, which stores without compressing.
            compressor: libdeflater::Compressor::new(
                libdeflater::CompressionLvl::new(1).expect("1 is a valid compression level"),
            ),
        }
    }
}

/// One whole object as a pack entry: its type and size header, then its
/// compressed bytes. Entries are independent, so they may be made anywhere.
pub struct Encoded(Vec<u8>);

impl Encoder {
    /// The pack entry of one object.
    pub fn encode(&mut self, kind: ObjectType, data: &[u8]) -> Result<Encoded, git2::Error> {
        let mut out = Vec::new();
        self.append(kind, data, &mut out)?;
        Ok(Encoded(out))
    }

    fn append(
        &mut self,
        kind: ObjectType,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), git2::Error> {
        let type_bits: u8 = match kind {
            ObjectType::Commit => 1,
            ObjectType::Tree => 2,
            ObjectType::Blob => 3,
            ObjectType::Tag => 4,
            _ => {
                return Err(git2::Error::from_str(
                    "only commits, trees, blobs and tags go in a pack",
                ));
            }
        };
        // Type and size: four bits of size in the first byte, seven in each next.
        let mut size = data.len();
        let mut byte = (type_bits << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            out.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        out.push(byte);
        let start = out.len();
        out.resize(start + self.compressor.zlib_compress_bound(data.len()), 0);
        let written = self
            .compressor
            .zlib_compress(data, &mut out[start..])
            .map_err(|e| git2::Error::from_str(&format!("cannot compress an object: {e:?}")))?;
        out.truncate(start + written);
        Ok(())
    }
}

impl PackOut {
    /// How many objects are queued.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Queues one object.
    pub fn push(&mut self, kind: ObjectType, data: &[u8]) -> Result<(), git2::Error> {
        self.encoder.append(kind, data, &mut self.body)?;
        self.counted()
    }

    /// Queues an entry an [`Encoder`] made.
    pub fn push_encoded(&mut self, entry: Encoded) -> Result<(), git2::Error> {
        self.body.extend_from_slice(&entry.0);
        self.counted()
    }

    fn counted(&mut self) -> Result<(), git2::Error> {
        self.count = self
            .count
            .checked_add(1)
            .ok_or_else(|| git2::Error::from_str("too many objects for one pack"))?;
        Ok(())
    }

    /// Writes the pack (with its index) into `odb`.
    pub fn write_into(self, odb: &Odb<'_>) -> Result<(), git2::Error> {
        if self.count == 0 {
            return Ok(());
        }
        let mut header = Vec::with_capacity(12);
        header.extend_from_slice(b"PACK");
        header.extend_from_slice(&2u32.to_be_bytes());
        header.extend_from_slice(&self.count.to_be_bytes());
        let mut sum = sha1_smol::Sha1::new();
        sum.update(&header);
        sum.update(&self.body);
        let trailer = sum.digest().bytes();
        let mut writer = odb.packwriter()?;
        let io = |e: std::io::Error| git2::Error::from_str(&format!("cannot write the pack: {e}"));
        use std::io::Write;
        writer.write_all(&header).map_err(io)?;
        writer.write_all(&self.body).map_err(io)?;
        writer.write_all(&trailer).map_err(io)?;
        writer.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_of_every_size_class_arrive_under_their_own_ids() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init_bare(dir.path()).expect("repo");
        let odb = repo.odb().expect("odb");
        // Sizes around the header's 4- and 11-bit boundaries, and an empty blob.
        let blobs: Vec<Vec<u8>> = [0usize, 15, 16, 2047, 2048, 300_000]
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 % 251) as u8).collect())
            .collect();
        let mut pack = PackOut::default();
        let mut ids = Vec::new();
        for blob in &blobs {
            pack.push(ObjectType::Blob, blob).expect("push");
            ids.push(git2::Oid::hash_object(ObjectType::Blob, blob).expect("hash"));
        }
        assert_eq!(pack.len(), blobs.len());
        let raw: usize = blobs.iter().map(Vec::len).sum();
        assert!(
            pack.body.len() < raw / 4,
            "the objects are compressed: {} of {raw} bytes",
            pack.body.len()
        );
        pack.write_into(&odb).expect("the indexer accepts the pack");
        odb.refresh().expect("refresh");
        for (id, blob) in ids.iter().zip(&blobs) {
            assert_eq!(odb.read(*id).expect("present").data(), &blob[..]);
        }
    }
}
