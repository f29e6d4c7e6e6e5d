module github.com/switchyard-dev/switchyard/tests

go 1.26.0

require (
	github.com/switchyard-dev/switchyard/cluster-gateway v0.0.0
	github.com/switchyard-dev/switchyard/global-router v0.0.0
	github.com/switchyard-dev/switchyard/gossip v0.0.0
	github.com/switchyard-dev/switchyard/proto v0.0.0
)

replace (
	github.com/switchyard-dev/switchyard/cluster-gateway => ../cluster-gateway
	github.com/switchyard-dev/switchyard/global-router => ../global-router
	github.com/switchyard-dev/switchyard/gossip => ../gossip
	github.com/switchyard-dev/switchyard/proto => ../proto
)
