FROM python:3.11-slim
WORKDIR /app
COPY . .
RUN pip install --no-cache-dir .
ENV OVERSEER_HOME=/data
CMD ["overseer", "up", "--host", "0.0.0.0"]
