module example.invalid/quorumlock/go

go 1.24
