module github.com/queuety/queuety-go

go 1.26

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/robfig/cron/v3 v3.0.1
)

require filippo.io/edwards25519 v1.2.0 // indirect
