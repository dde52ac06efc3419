package cli

// commands is the command table: every top-level command of
// queuety-worker, in the order `help` lists them. Adding a command is one
// entry here (see the package documentation for the Command fields).
func commands() []*Command {
	return []*Command{
		workCommand(),
		flushCommand(),
		migrateCommand(),
		statusCommand(),
		dispatchCommand(),
		queueCommand(),
		jobCommand(),
		workflowCommand(),
		machineCommand(),
		signalCommand(),
		scheduleCommand(),
		uiCommand(),
		webhookCommand(),
		workerCommand(),
		logCommand(),
		metricsCommand(),
		discoverCommand(),
		demoCommand(),
		benchCommand(),
		completionCommand(),
		versionCommand(),
	}
}

// rootCommand is the program itself: the command table as subcommands.
func rootCommand() *Command {
	return &Command{
		Name:    Program,
		Summary: "run queuety workers and operate the queue (jobs, workflows, queues) from the command line",
		Help: `queuety-worker processes Queuety jobs and workflow steps and lets operators
inspect and act on them. It shares Queuety PHP's tables, so it can point at
a WordPress database (--wp-config) or use an embedded SQLite file.`,
		Examples: []string{
			Program + " demo",
			Program + " migrate --dsn 'mysql://wp:secret@127.0.0.1:3306/wordpress?prefix=wp_'",
			Program + " work --once --max-time 50s --wp-config /var/www/html/wp-config.php",
			Program + " status",
			Program + " workflow inspect 42",
			Program + " help workflow",
		},
		Sub: commands(),
	}
}
