//! fake-pi: behaves like pi on the command line and replays a cassette.

fn main() {}
