"""Views of the judge's verdicts: text, JSON, figures, HTML and Markdown pages."""
