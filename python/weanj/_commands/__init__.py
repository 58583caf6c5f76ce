"""The commands, side by side: each module is one command (`check`, `diff`, `run`,
`bench`, `bisect`, `fuzz`, `report`, `plot`, `inputs`, `listing`, `new`, `record`). Its
public function is what the command line, the pytest plugin and the Python API call; it
receives objects (`Catalog`, `Variant`), the front end having looked the names up once,
and raised the error for an unknown one. `check`, `diff` and `report` are also the Python
API's front door (`weanj.check(["01-jacobi"])`): they look the names up on their first
lines and hand objects on. No command imports another: what two need lives below them
(`_pipeline`, `_report`, `_io`)."""
