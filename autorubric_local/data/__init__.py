"""Data to grade: datasets, train/test splits, their validation, and the CLI's data files.

- :mod:`.dataset`: ``DataItem`` and ``RubricDataset`` (AutoRubric's JSON format as-is);
- :mod:`.split`: stratified train/test splits;
- :mod:`.validation`: checks that name the file, item and field of a problem;
- :mod:`.submissions`: the ``grade`` command's rubric and data files (JSONL, JSON, datasets);
- :mod:`.jsonl_items`: a JSONL file's items, read from the file when used instead of held.
"""
