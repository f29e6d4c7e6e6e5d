module github.com/switchyard-dev/switchyard/gossip

go 1.26.0

require github.com/switchyard-dev/switchyard/proto v0.0.0

require github.com/cespare/xxhash/v2 v2.3.0 // indirect

replace github.com/switchyard-dev/switchyard/proto => ../proto
