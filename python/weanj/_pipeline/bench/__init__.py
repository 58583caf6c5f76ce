"""`weanj bench`: its plan (the points), one point measured, and the timer."""
