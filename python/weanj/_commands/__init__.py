"""The commands, side by side: each module is one command (`check`, `diff`, `run`,
`bench`, `bisect`, `fuzz`, `report`, `plot`, `inputs`, `listing`, `new`, `record`). Its
public function is what the command line, the pytest plugin and the Python API call; it
takes names, looks them up once (`_registry`) and works on objects below. No command
imports another: what two need lives below them (`_pipeline`, `_report`, `_io`)."""
