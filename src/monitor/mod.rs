pub(crate) mod wheel;
