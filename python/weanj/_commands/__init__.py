"""The commands, side by side: each module is one command (`check`, `diff`, `run`,
`bench`, `bisect`, `fuzz`, `report`, `plot`, `inputs`, `listing`, `new`, `record`). Its
public function is what the command line, the pytest plugin and the Python API call; it
receives objects (`Catalog`, `Variant`), the front end having looked the names up once,
and raised the error for an unknown one (check, diff, run and report still look theirs up
themselves: issue #43 item 6). No command imports another: what two need lives below them
(`_pipeline`, `_report`, `_io`)."""
