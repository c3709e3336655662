FROM python:3.11-slim
# bubblewrap: the jail shell.run runs in (the tool refuses to run without it)
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir .
ENV OVERSEER_HOME=/data
CMD ["overseer", "up", "--host", "0.0.0.0"]
