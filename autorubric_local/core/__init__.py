"""The grading core: AutoRubric's types and rules, with no model, file or database behind them.

- :mod:`.errors`: the error hierarchy (``AutorubricError`` and its subclasses);
- :mod:`.types`: criteria, options, verdicts, judgments, strategies;
- :mod:`.reports`: criterion and evaluation reports, ``TokenUsage``;
- :mod:`.usage`: totals of usage and cost over many reports;
- :mod:`.penalty`: the length penalty and thinking/output input;
- :mod:`.scoring`: the one scoring function;
- :mod:`.rubric`: ``Rubric`` and its loaders.
"""
