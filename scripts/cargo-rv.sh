#!/usr/bin/env bash
# cargo with --ignore-rust-version on the subcommands that check it. pgrx
# 0.19.4 declares Rust 1.96 and builds on 1.95, the toolchain here; cargo
# has no setting for it, and cargo-pgrx forwards its --cargo flags to
# `cargo metadata` too, which refuses the flag. The build scripts call
# cargo-pgrx with CARGO pointing here (scripts/pg.sh: pgrx_cargo).
case "${1:-}" in
  build|rustc|check|test|clippy|run) sub=$1; shift; exec cargo "$sub" --ignore-rust-version "$@" ;;
esac
exec cargo "$@"
