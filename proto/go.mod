module github.com/switchyard-dev/switchyard/proto

go 1.26.0
