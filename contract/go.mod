module github.com/switchyard-dev/switchyard/contract

go 1.26.0
