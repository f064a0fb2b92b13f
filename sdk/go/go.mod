module github.com/posthorn/posthorn-go

go 1.19
