package mysql

// QuietAfter is quietAfter, for the external tests.
const QuietAfter = quietAfter
