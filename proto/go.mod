module github.com/switchyard-dev/switchyard/proto

go 1.26.0

require google.golang.org/protobuf v1.36.12
