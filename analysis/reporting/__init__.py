"""The report of a campaign: its model, its two renderings, its plots and our written reading.

  report.py        `run.sh report CAMPAIGN`: a campaign's results as tables, plots and a report.
  report_render.py The report model and its two renderings: Markdown and one self-contained HTML page.
  plots.py         The report's plots: pandas tables in, PNG + SVG files and a `Figure` record out.
  chart_points.py  What one point of a report chart is: the mean of one configuration's repeats, and the line it is on.
  discussion.py    Our written reading of a campaign's results (`<campaign>.discussion.toml`).
"""
