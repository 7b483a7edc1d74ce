// breakout: keep the ball in play with the paddle (LEFT/RIGHT; SPACE launches, or it launches by
// itself after a second) and clear the 4 x 8 wall. +1 per brick, 3 lives, clearing the wall
// wins. Written for puffgpu's JS envs (p5.js style + the RL contract).
let paddle, ball, bricks, score, lives, gameState;
const ROWS = [[220, 70, 70], [230, 150, 50], [200, 200, 60], [80, 190, 90]];

function setup() {
  createCanvas(400, 400);
}

function resetGame(seed) {
  score = 0;
  lives = 3;
  gameState = 'PLAYING';
  paddle = { x: 200, y: 372, w: 70, h: 10 };
  bricks = [];
  for (let r = 0; r < ROWS.length; r++) {
    for (let c = 0; c < 8; c++) bricks.push({ x: c * 50 + 3, y: 50 + r * 22, w: 44, h: 16, row: r, alive: true });
  }
  serve();
}

function serve() {
  ball = { x: paddle.x, y: paddle.y - 8, vx: 0, vy: 0, r: 7, held: true, timer: 60 };
}

function launch() {
  const a = random(-0.6, 0.6);
  ball.vx = 6 * sin(a);
  ball.vy = -6 * cos(a);
  ball.held = false;
}

function keyPressed() {
  if (keyCode === 32 && ball.held && gameState === 'PLAYING') launch();
}

function draw() {
  background(10, 10, 30);
  if (gameState === 'PLAYING') update();
  noStroke();
  for (const b of bricks) {
    if (!b.alive) continue;
    const c = ROWS[b.row];
    fill(c[0], c[1], c[2]);
    rect(b.x, b.y, b.w, b.h);
  }
  fill(90, 170, 255);
  rectMode(CENTER);
  rect(paddle.x, paddle.y + paddle.h / 2, paddle.w, paddle.h);
  rectMode(CORNER);
  fill(255);
  circle(ball.x, ball.y, ball.r * 2);
  fill(255, 120, 200);
  for (let i = 0; i < lives; i++) rect(10 + i * 18, 12, 12, 12);
}

function update() {
  if (keyIsDown(LEFT_ARROW)) paddle.x -= 8;
  if (keyIsDown(RIGHT_ARROW)) paddle.x += 8;
  paddle.x = constrain(paddle.x, paddle.w / 2, width - paddle.w / 2);
  if (ball.held) {
    ball.x = paddle.x;
    ball.timer -= 1;
    if (ball.timer <= 0) launch();
    return;
  }
  ball.x += ball.vx;
  ball.y += ball.vy;
  if (ball.x < ball.r) { ball.x = ball.r; ball.vx = abs(ball.vx); }
  if (ball.x > width - ball.r) { ball.x = width - ball.r; ball.vx = -abs(ball.vx); }
  if (ball.y < ball.r) { ball.y = ball.r; ball.vy = abs(ball.vy); }
  if (ball.vy > 0 && ball.y + ball.r >= paddle.y && ball.y - ball.r <= paddle.y + paddle.h &&
      abs(ball.x - paddle.x) <= paddle.w / 2 + ball.r) {
    const hit = constrain((ball.x - paddle.x) / (paddle.w / 2), -1, 1);
    const speed = sqrt(ball.vx * ball.vx + ball.vy * ball.vy);
    ball.vx = speed * sin(hit * 1.0);
    ball.vy = -speed * cos(hit * 1.0);
    ball.y = paddle.y - ball.r;
  }
  for (const b of bricks) {
    if (!b.alive) continue;
    if (ball.x + ball.r > b.x && ball.x - ball.r < b.x + b.w && ball.y + ball.r > b.y && ball.y - ball.r < b.y + b.h) {
      b.alive = false;
      score += 1;
      const dx = min(abs(ball.x - b.x), abs(ball.x - b.x - b.w));
      const dy = min(abs(ball.y - b.y), abs(ball.y - b.y - b.h));
      if (dx < dy) ball.vx = -ball.vx; else ball.vy = -ball.vy;
      break;
    }
  }
  if (ball.y - ball.r > height) {
    lives -= 1;
    if (lives <= 0) gameState = 'GAMEOVER'; else serve();
  }
  if (bricks.every((b) => !b.alive)) gameState = 'WIN';
}

function getGameState() {
  return { score: score, lives: lives, gameState: gameState };
}
